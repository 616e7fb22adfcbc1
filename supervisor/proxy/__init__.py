"""The filtering proxy of proxy mode, run by the supervisor on unix sockets.

The sandbox's only way out: the network helper inside the sandbox's namespace bridges
127.0.0.1's HTTP, SOCKS5 and DNS ports to the sockets here. Every decision is made on the
name the program asked for, before any lookup (`rules`), so a refused name is never
resolved; an allowed one is resolved here (`resolver`) and the connection goes to an
address this process found itself, never one the sandbox named for an allowed name.
Refusals are events, like refused programs.

- `rules`: the allow list, decided on a name and port;
- `resolver`: the host-side lookup (the one seam tests observe);
- `upstream`: connecting to an allowed destination, and relaying bytes;
- `http`: HTTP/1.1 absolute-URI requests and CONNECT (h11);
- `socks`: SOCKS5 CONNECT with names and addresses;
- `names`: the name service the helper's DNS asks;
- `server`: the run's private folder, its listeners, and serving them under anyio.
"""
