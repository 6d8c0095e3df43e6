"""The attempt topology as data (`topology.yaml`) and explicit subnet allocation."""
