"""The lab's test instrumentation for IPsec gateway VMs, delivered as day-0 data (a cloud-config merged after
the VNF's own, ``nfvcat.day0.userdata``), never baked into the product image: ``nfvcat-probe`` prints the
IPsec SA state and ESP counters as ``NFVCAT-PROBE`` lines on the serial console, and once cloud-init is done
its verdict as ``NFVCAT-CLOUD-INIT`` lines. It configures nothing of the VNF.

``bootcmd`` (cloud-init's init stage, before ``write_files``) starts it as a transient systemd unit that waits
for the script ``write_files`` puts in place right after, so the probe runs from the first seconds of
cloud-init, before the VNF's own day-0 (its final stage) loads anything. The unit has no default
dependencies and ``systemd-run`` does not wait for it (``--no-block``): cloud-init.service is ordered before
sysinit.target, a transient unit with default dependencies after it, so waiting for its start from bootcmd
deadlocks the boot (seen: the gateways stopped after cloud-init's network stage).
"""

from __future__ import annotations

FILENAME = "nfvcat-probe.cfg"

CLOUD_CONFIG = r"""#cloud-config
# nfvcat lab instrumentation (not VNF configuration): IPsec SA state and ESP counters on the console
bootcmd:
  - [systemd-run, --no-block, --property=DefaultDependencies=no, --unit=nfvcat-probe,
     --description=nfvcat test probe, /bin/sh, -c,
     'while [ ! -x /usr/local/sbin/nfvcat-probe ]; do sleep 1; done; exec /usr/local/sbin/nfvcat-probe']
write_files:
  - path: /usr/local/sbin/nfvcat-probe
    permissions: '0755'
    content: |
      #!/bin/sh
      # nfvcat test instrumentation, not VNF configuration: reports the IPsec SAs on the console.
      t0=""
      done=""
      while :; do
        up=$(cut -d' ' -f1 /proc/uptime)
        raw=$(swanctl --list-sas --raw 2>/dev/null)
        if echo "$raw" | grep -q 'state=INSTALLED'; then
          if [ -z "$t0" ]; then
            t0=$up
            echo "NFVCAT-PROBE tunnel-up uptime=$up" > /dev/console
            echo "NFVCAT-PROBE datasource $(cloud-init query v1.platform 2>/dev/null) $(cloud-init query v1.subplatform 2>/dev/null)" > /dev/console
          fi
          f=$(echo "$raw" | grep -o '\(state\|protocol\|encap\|bytes-in\|packets-in\|bytes-out\|packets-out\)=[A-Za-z0-9]*' | tr '\n' ' ')
          x=$(ip -s xfrm state 2>/dev/null | grep -c 'proto esp')
          echo "NFVCAT-PROBE counters uptime=$up xfrm_esp_states=$x $f" > /dev/console
        else
          n=$((${n:-0} + 1))
          if [ $((n % 10)) = 0 ]; then  # every 30 s without a tunnel: what strongSwan says
            echo "NFVCAT-PROBE waiting uptime=$up conns=$(swanctl --list-conns 2>&1 | grep -c IKEv2)" > /dev/console
            journalctl -u strongswan.service -o cat -n 12 --no-pager 2>&1 | sed 's/^/NFVCAT-PROBE log: /' > /dev/console
          fi
        fi
        if [ -z "$done" ] && [ -f /run/cloud-init/result.json ]; then
          done=1
          echo "NFVCAT-CLOUD-INIT $(cloud-init status 2>&1 | tr '\n' ' ')" > /dev/console
          echo "NFVCAT-CLOUD-INIT result $(tr -d '\n' < /run/cloud-init/result.json)" > /dev/console
        fi
        sleep 3
      done
"""  # noqa: E501 (shell lines)
