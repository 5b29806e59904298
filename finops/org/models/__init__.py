"""The organisation's tables: users, teams, memberships, workloads; the audit log; API tokens."""
