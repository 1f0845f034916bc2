print("purgefs: the command is being built")
