#!/bin/sh
# a copy of the worktree's src with the scratch server modules wired in (testing before issue 31 lands)
set -e
rm -rf /tmp/h36/srctest && mkdir -p /tmp/h36/srctest && cp -r /work/wt/h36/src /tmp/h36/srctest/
S=/tmp/h36/srctest/src/wisp/server
cp /tmp/h36/srv/store_reports.py $S/_store_reports.py
cp /tmp/h36/srv/schemas_reports.py $S/_report_types.py
cp /tmp/h36/srv/views_reports.py $S/_reports.py
cp /tmp/h36/srv/0008_reports.py $S/migrations/versions/0008_reports.py
python3 - <<'PY'
S="/tmp/h36/srctest/src/wisp/server"
p=S+"/_openapi.py"; s=open(p).read()
s=s.replace("    from wisp.server._workspaces import WorkspaceApi\n","    from wisp.server._reports import ReportApi\n    from wisp.server._workspaces import WorkspaceApi\n")
s=s.replace("AdminApi, WorkspaceApi]","AdminApi, WorkspaceApi, ReportApi]")
open(p,"w").write(s)
p=S+"/_auth.py"; s=open(p).read()
s=s.replace('''    _r("POST", "/artifact-files/missing", "write", "none"),''','''    _r("GET HEAD", f"{_PROJECT}/reports(/[^/]+(/versions|/diff|/data|/html)?)?", "read", "project"),
    _r("POST", f"{_PROJECT}/report-preview", "read", "project"),
    # saving a report: write rights on the project, or the local no-auth caller (wisp ui)
    _r("PUT DELETE", f"{_PROJECT}/reports/[^/]+", "read", "report_write", "report.save"),
    _r("POST", f"{_PROJECT}/reports/[^/]+/(revert|freeze)", "read", "report_write", "report.save"),
    _r("POST", "/artifact-files/missing", "write", "none"),''')
s=s.replace('''        elif rule.touches == "workspace":''','''        elif rule.touches == "report_write":
            if p.via != "local":
                need_scope(p, "write")
            await run_in_threadpool(self.need_project_write, p, unquote(params["project"]))
        elif rule.touches == "workspace":''')
open(p,"w").write(s)
p=S+"/_schema.py"; s=open(p).read()
open(p,"w").write(s)
PY
rm -rf /tmp/h36/srctest/tests && cp -r /work/wt/h36/tests /tmp/h36/srctest/tests && cp /work/wt/h36/pyproject.toml /tmp/h36/srctest/
cp /tmp/h36/srv/test_reports.py /tmp/h36/srctest/tests/server/test_reports.py
