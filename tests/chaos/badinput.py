# placeholder
SCENARIOS = []
CI_SCENARIOS = []
