"""What the jobs in ``jobs/`` share: configs, the method table, loaders, one training run, reports,
the model registry and the retraining decision."""
