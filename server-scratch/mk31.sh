#!/bin/sh
# issue 31's tree (commit in /tmp/wisp-coord/31-moved) + this branch's changes + the reports server modules
set -e
C=$(cat /tmp/wisp-coord/31-moved)
T=/tmp/h36/t31
rm -rf $T && mkdir -p $T
cd /work/wt/h36
git archive $C src tests pyproject.toml docs | tar -x -C $T
for f in $(git diff --name-only 9643767 HEAD -- src tests pyproject.toml docs); do
  [ -e "$f" ] && mkdir -p "$T/$(dirname $f)" && cp "$f" "$T/$f"
done
S=$T/src/wisp/server
cp /tmp/h36/srv31/store_reports.py $S/store/reports.py
cp /tmp/h36/srv31/schemas_reports.py $S/schemas/reports.py
cp /tmp/h36/srv31/views_reports.py $S/views/reports.py
cp /tmp/h36/srv31/0008_reports.py $S/store/migrations/versions/0008_reports.py
cp /tmp/h36/srv31/test_reports.py $T/tests/server/test_reports.py
cp /tmp/h36/srv31/test_report_remote.py $T/tests/cli/test_report_remote.py
cp /tmp/h36/srv31/test_report_page.py $T/tests/browser/test_report_page.py
sed -i 's/from wisp.server._filter import/from wisp.server.query.filter import/; s/from wisp.server._problem import/from wisp.server.http.problem import/' $T/src/wisp/reports/*.py
python3 /tmp/h36/wire31.py $T
