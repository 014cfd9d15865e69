# An IPv6 socket, a family every host supports (it works in the sandbox's own network namespace,
# on its loopback): only the system-call filter refuses it.
import socket

client = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
