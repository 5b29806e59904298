"""The organisation, one domain in one folder (issue 27): users, teams, memberships and workloads, the audit log
and API tokens (models/), their reads (selectors/), their write paths and the key rotation of secrets at rest
(services/), the audit log and API tokens pages (views/)."""
