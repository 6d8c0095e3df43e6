"""The model gateway of an attempt (design.md "Topology of one attempt", spec §9).

A small HTTP proxy that sits on the attempt network and on an egress network. The agent talks to
it as if it were its model provider (Anthropic Messages, OpenAI Responses and Chat Completions);
it forwards only to the declared upstreams, swaps the attempt's virtual key for the real one,
meters every call into a usage log and enforces the attempt's budgets. Its control API (turn marks,
the usage log, revoking the key) listens on the control network only.

`model_gateway.fake_provider` is the scripted stand-in for a provider used by the tests.
This package imports none of the project's other packages.
"""
