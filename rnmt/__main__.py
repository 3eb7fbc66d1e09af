from rnmt.cli import main

raise SystemExit(main())
