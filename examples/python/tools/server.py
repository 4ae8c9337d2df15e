"""The project's tools: a FastMCP server. rft-endpoints starts one instance of it per rollout, inside
the rollout's sandbox (mcp.json: "sandbox": true), and offers its tools at /tools, /mcp and in
/v1/job-config like any other tool, with the rollout's budget and record.

Add a tool: a function with type hints and a docstring under @mcp.tool; restart the server. Its
working directory is the rollout's workspace (/workspace), private to the rollout and gone with it.
There is no network in the sandbox.
"""

import ast
import operator
import statistics
from pathlib import Path

from fastmcp import FastMCP

mcp = FastMCP("python-tools")

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        right = _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 100:
            raise ValueError("exponents above 100 are not allowed")
        return _BINARY[type(node.op)](_evaluate(node.left), right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    raise ValueError(f"only numbers, + - * / // % ** and parentheses are allowed, not {type(node).__name__}")


@mcp.tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression, e.g. "(1250 - 980) / 980 * 100". Numbers, + - * / // % ** and parentheses."""
    try:
        value = _evaluate(ast.parse(expression, mode="eval"))
    except ZeroDivisionError:
        raise ValueError("division by zero")
    except SyntaxError as e:
        raise ValueError(f"not an arithmetic expression: {e.msg}")
    return str(round(value, 10))


@mcp.tool
def describe_numbers(values: list[float]) -> dict:
    """Count, sum, mean, median, population standard deviation, min and max of a list of numbers."""
    if not values:
        raise ValueError("give at least one number")
    return {
        "count": len(values),
        "sum": round(sum(values), 10),
        "mean": round(statistics.fmean(values), 10),
        "median": statistics.median(values),
        "stdev": round(statistics.pstdev(values), 10),
        "min": min(values),
        "max": max(values),
    }


@mcp.tool
def note(text: str = "") -> str:
    """Keep a scratchpad for this task: appends `text` (when given) as a line, then returns every note so far."""
    pad = Path("notes.txt")
    if text:
        with pad.open("a", encoding="utf-8") as f:
            f.write(text.replace("\n", " ") + "\n")
    return pad.read_text(encoding="utf-8") if pad.exists() else "(no notes yet)"


if __name__ == "__main__":
    mcp.run(show_banner=False)
