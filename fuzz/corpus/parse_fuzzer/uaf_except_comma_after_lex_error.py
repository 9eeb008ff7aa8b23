try:
    run()
except OSError, err:
    pass
try:
    run()
except KeyError, k:
    pass
value = 3 ? 4
