"""The rml model zoo: 19 models, defined once per framework on shared weights."""
