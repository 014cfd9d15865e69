"""Shared code: imported by the parent (host), the candidate's sandbox (inside) and the trusted judge
(judge). Nothing here holds a host secret or does a privileged operation; the modules that import
torch (verify, launches, facts) are imported only by inside and judge, never by the host side."""
