"""What-if analysis over a loaded scenario: levers by symptom (the playbook), sweeps, diffs."""
