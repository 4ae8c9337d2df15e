#!/bin/bash
set -euo pipefail
printf '#!/bin/bash\nfor i in 1 2 3 4 5; do echo "$i"; done\n' > /app/count.sh
