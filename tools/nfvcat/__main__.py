from nfvcat.cli import main

raise SystemExit(main())
