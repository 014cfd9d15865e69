# A vsock socket: the network namespace does not cover AF_VSOCK (it reaches the hypervisor and
# its other guests). A host without the vsock module answers EAFNOSUPPORT, the filter EACCES.
import socket

client = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
