# A Unix socket of the host (a database, a queue, the Docker daemon).
import socket

client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
client.connect("{socket_path}")
