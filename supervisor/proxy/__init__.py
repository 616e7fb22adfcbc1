"""The filtering proxy of proxy mode, run by the supervisor, and the ports beside it.

The sandbox's only way out. On Linux the network helper makes the listeners inside the
sandbox's network namespace (127.0.0.1:3128 HTTP, :1080 SOCKS5, :53 DNS) and hands them
over, so the supervisor accepts the sandbox's connections itself; on macOS it binds them
on the host's loopback. Every decision is made on the name the program asked for,
before any lookup (`rules`), so a refused name is never resolved; an allowed one is
resolved here (`resolver`), each address found is judged (`addresses`: no way to the
host's loopback, a private network or a metadata service through a name), and the
connection goes to an address this process found and judged itself. Refusals are events,
like refused programs.

- `addresses`: the kinds of address a name must not lead to, in every written form;
- `rules`: `[network] allow` and `deny`, on names and on the addresses found;
- `decider`: a harness's verdicts at run time, for what no list names (`--decide-fd`);
- `resolver`: the host-side lookup (the one seam tests observe);
- `upstream`: the gate every protocol goes through, and connecting;
- `streams`, `relay`: non-blocking sockets, and moving a tunnel's bytes (splice);
- `http`: HTTP/1.1 absolute-URI requests and CONNECT (h11);
- `socks`: SOCKS5 CONNECT with names and addresses;
- `names`, `dnswire`: the sandbox's DNS;
- `ports`: `[network] forward` and `expose`;
- `server`: serving the listeners; `runfolder`: the run's private folder (resolv.conf).
"""
