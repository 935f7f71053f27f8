"""Random-field (TRF) language-model training with exact or MCMC samples (issue 22, target 3)."""
