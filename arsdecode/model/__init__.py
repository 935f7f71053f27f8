"""The model interface: what the engine asks of the hidden layer's language model.

`interface` defines `TargetModel` (any target implements it); `maxarpa_lm` adapts a
`maxarpa.Model` to it, once, at the door (`as_target_model`).
"""

from arsdecode.model.maxarpa_lm import MaxArpaLM, TargetModel, as_target_model, context_rows

__all__ = ["MaxArpaLM", "TargetModel", "as_target_model", "context_rows"]
