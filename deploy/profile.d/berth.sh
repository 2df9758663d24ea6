# Berth: the GPUs of your reservations on this node, for login shells (sshd sets them for SSH
# sessions too). Install as /etc/profile.d/berth.sh. The agent writes one file per holder.
berth_lease_env="${BERTH_LEASE_DIR:-/run/berth/leases}/$(id -un).env"
if [ -r "$berth_lease_env" ]; then
    set -a
    . "$berth_lease_env"
    set +a
fi
unset berth_lease_env
