# An abstract Unix socket of the host (no file: reachable from any process of its network namespace).
import socket

client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
client.connect("\0{abstract_name}")
