"""E1003 decides what a secret is by what a parameter feeds, with its name as a hint."""

from __future__ import annotations

from pathlib import Path

from nfvcat.core import documents
from nfvcat.validation.rules.base import Context
from nfvcat.validation.rules.hot.e1003_secret_parameter import SecretParameter

TEMPLATE = """heat_template_version: 2021-04-16
parameters:
  secret_type: {type: string, default: opaque}
  secret_ref: {type: string}
  key_name: {type: string, default: ops}
  certificate: {type: string}
  login: {type: string}
  tunnel_key: {type: string}
  hostname: {type: string, default: vnf}
  ssh_signing: {type: string}
  db_user_secret: {type: string}
  vpn_psk: {type: string, hidden: true}
  unused_password: {type: string}
  tls_secret: {type: string}
  os_user: {type: string}
  os_pw: {type: string}
  controller: {type: string}
  value_secret: {type: string}
resources:
  cert:
    type: OS::Barbican::Secret
    properties:
      secret_type: {get_param: secret_type}
      payload: {get_param: certificate}
  server:
    type: OS::Nova::Server
    properties:
      flavor: m1.small
      image: cirros
      key_name: {get_param: key_name}
      admin_pass: {get_param: login}
      user_data_format: RAW
      user_data:
        str_replace:
          template: |
            #cloud-config
            hostname: $HOST
            write_files:
              - path: /etc/ipsec.secrets
                content: ": PSK \\"$TK\\""
          params:
            $HOST: {get_param: hostname}
            $TK: {get_param: tunnel_key}
  config:
    type: OS::Heat::SoftwareConfig
    properties:
      config:
        list_join:
          - ''
          - - "#!/bin/sh\\ncat > /root/.ssh/id_rsa <<EOF\\n-----BEGIN OPENSSH PRIVATE KEY-----\\n"
            - {get_param: ssh_signing}
            - "\\nEOF\\n"
  lookup:
    type: OS::Barbican::GenericContainer
    properties:
      secrets:
        - name: db
          ref: {get_param: secret_ref}
  listener:
    type: OS::Octavia::Listener
    properties:
      protocol: TERMINATED_HTTPS
      protocol_port: 443
      loadbalancer: lb
      default_tls_container_ref: {get_param: tls_secret}
  login_script:
    type: OS::Heat::SoftwareConfig
    properties:
      config:
        str_replace:
          template: |
            #!/bin/sh
            curl http://$CTRL:5000/v3/auth/tokens -d '{"passwordCredentials": {"username": "$U", "password": "$P"}}'
          params:
            $CTRL: {get_param: controller}
            $U: {get_param: os_user}
            $P: {get_param: os_pw}
  value:
    type: OS::Heat::Value
    properties:
      value: {get_param: value_secret}
  db:
    type: OS::Trove::Instance
    properties:
      flavor: small
      size: 1
      users:
        - name: app
          password: {get_param: db_user_secret}
"""


def _flagged(tmp_path: Path) -> dict[str, list[str]]:
    """What E1003 flags in TEMPLATE as the template of a catalog entry (its policy holds there)."""
    path = tmp_path / "secrets.yaml"
    path.write_text(TEMPLATE)
    (tmp_path / "entry.yaml").write_text("name: secrets\nversion: 1.0.0\nkind: heat\ntemplate: secrets.yaml\n")
    out: dict[str, list[str]] = {}
    for raw in SecretParameter().check(documents.read(str(path)), Context()):
        out.setdefault(str(raw.path[1]), []).append(raw.message)
    return out


def test_a_parameter_is_secret_by_what_it_feeds(tmp_path: Path) -> None:
    flagged = _flagged(tmp_path)
    # fed into a Barbican payload, admin_pass, a PSK line of user data, a private key, a password property
    for name in ("certificate", "login", "tunnel_key", "ssh_signing", "db_user_secret", "os_pw"):
        assert name in flagged, (name, flagged)
    assert "payload" in " ".join(flagged["certificate"]) and "admin_pass" in " ".join(flagged["login"])
    assert "user_data" in " ".join(flagged["tunnel_key"])
    assert "unused_password" in flagged  # fed nowhere: its name says it is a secret
    assert "value_secret" in flagged  # fed into a value that says nothing: its name says it is a secret
    # a line that logs in with a user name and a password: the user name is not the secret
    for name in ("secret_type", "secret_ref", "key_name", "hostname", "vpn_psk", "tls_secret", "os_user",
                 "controller"):
        assert name not in flagged, (name, flagged[name])


def test_a_template_outside_any_entry_is_not_held_to_the_catalogs_policy(tmp_path: Path) -> None:
    """Someone else's template with a default password: Heat and the cloud take it; it ships in no catalog."""
    path = tmp_path / "foreign.yaml"
    path.write_text(TEMPLATE)
    assert not list(SecretParameter().check(documents.read(str(path)), Context()))
    (tmp_path / "entry.yaml").write_text("name: foreign\nversion: 1.0.0\nkind: heat\ntemplate: foreign.yaml\n")
    assert list(SecretParameter().check(documents.read(str(path)), Context()))
