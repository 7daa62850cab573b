"""What a trial checks beside its outputs, controller side: that each lever took effect (engagement.py), that the step
did the baseline's work (proof.py) and no faster than its roof allows (roof.py), and that the timed legs can be
believed (clock_checks.py)."""
