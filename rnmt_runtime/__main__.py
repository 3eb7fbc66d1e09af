from rnmt_runtime.cli import main

raise SystemExit(main())
