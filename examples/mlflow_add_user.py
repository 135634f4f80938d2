"""Add a user to a tracking server running MLflow's basic-auth app (docs/cluster.md):

    python examples/mlflow_add_user.py http://HEAD:5000 alice alice_password

run as the admin, whose credentials MLflow reads from MLFLOW_TRACKING_USERNAME and
MLFLOW_TRACKING_PASSWORD or ~/.mlflow/credentials. The new password is read from a file (make
it 0600), never given on the command line, where `ps` and the shell's history would show it.
"""

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from mlflow.server import get_app_client

    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    uri, name, password_file = argv
    password = Path(password_file).read_text().strip()
    get_app_client("basic-auth", tracking_uri=uri).create_user(name, password)
    print(f"user {name!r} created on {uri}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
