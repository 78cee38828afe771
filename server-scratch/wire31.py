import sys
S = sys.argv[1] + "/src/wisp/server"
p = S + "/http/openapi.py"; s = open(p).read()
a = "    from wisp.server.views.workspaces import WorkspaceApi\n"
assert a in s
s = s.replace(a, "    from wisp.server.views.reports import ReportApi\n" + a)
import re
m = re.search(r"return \[([^\]]*WorkspaceApi[^\]]*)\]", s)
assert m, "api list"
s = s.replace(m.group(0), m.group(0)[:-1] + ", ReportApi]")
open(p, "w").write(s)
p = S + "/http/auth.py"; s = open(p).read()
a = '''    _r("POST", "/artifact-files/missing", "write", "none"),'''
assert a in s
s = s.replace(a, '''    _r("GET HEAD", f"{_PROJECT}/reports(/[^/]+(/versions|/diff|/data|/html)?)?", "read", "project"),
    _r("POST", f"{_PROJECT}/report-preview", "read", "project"),
    # saving a report: write rights on the project, or the local no-auth caller (wisp ui)
    _r("PUT DELETE", f"{_PROJECT}/reports/[^/]+", "read", "report_write", "report.save"),
    _r("POST", f"{_PROJECT}/reports/[^/]+/(revert|freeze)", "read", "report_write", "report.save"),
''' + a)
a = '''        elif rule.touches == "workspace":'''
assert a in s
s = s.replace(a, '''        elif rule.touches == "report_write":
            if p.via != "local":
                need_scope(p, "write")
            await run_in_threadpool(self.need_project_write, p, unquote(params["project"]))
''' + a)
open(p, "w").write(s)
