from nfvcat.cli import run

run()
