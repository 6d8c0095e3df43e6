"""Northgate Valve Co.: the shared company every task pack's generator starts from.

`build_northgate(seed, path, ...)` creates the scenario database: people, chart of accounts,
items and BOMs, vendors and customers, budgets, then twelve months of history run through the
ERP's own service functions so every tie holds on the first day. Names, amounts, dates and
planted positions come from the seed.
"""
