import json
rows = total = top = 0
try:
    s = json.load(open("/app/summary.json"))
    rows = int(s.get("rows") == 5)
    total = int(s.get("total") in (440, 440.0))
    top = int(s.get("top_region") == "east")
except Exception as e:
    print("unreadable summary:", e)
json.dump({"rows": rows, "total": total, "top_region": top}, open("/logs/verifier/reward.json", "w"))
