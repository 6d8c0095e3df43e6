"""Sealed studies (issue 39): what a reader can check without trusting the runner.

- declaration.py  `orchestrate declare`: the study declaration (cells, task trees, sources and
                  image tags, budgets, repetitions, analysis plan) and its hash; a campaign run
                  `--declared FILE` must match it before any attempt runs
- seeds.py        sealed seeds: drawn from a private range by a secret the user keeps; only a
                  commitment is declared; the reveal is checked against it
- replay.py       an attempt's final database re-derived from its audit log on a fresh copy of
                  the scenario (clock advances and counterparties included), compared by
                  canonical hash; the first diverging request is named

May import erp_service (the replay runs the ERP in this process), orchestrator's root modules,
scenarios/ and campaign/ (records only); nothing here is imported by the attempt's runtime.
"""
