from glassrag.interfaces.cli.main import main

main()
