from sema_rpc.cli import main

main()
