"""HTTP routers, one module per resource: users (enrol, verify, report, revoke), admin, schemes, health."""
