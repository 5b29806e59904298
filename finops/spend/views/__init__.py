"""The spend pages: overview, teams, workloads, providers, explore, unattributed, the rules, the FOCUS usage
export."""
