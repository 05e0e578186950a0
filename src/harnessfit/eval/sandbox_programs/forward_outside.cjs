// The runner's half of the endpoint forward, run by Node outside the sandbox (`node -e`, see
// harnessfit/eval/sandbox.py EndpointForwarder; libuv pipes keep back-pressure and cost the runner's Python process
// nothing): listen on a unix socket, pipe each connection to host:port; print "ready" once listening; exit when the
// runner closes stdin (or dies).
const net = require("node:net");
const [sock, host, port] = process.argv.slice(1);
const server = net.createServer((inside) => {
  const outside = net.connect(Number(port), host);
  const close = () => { inside.destroy(); outside.destroy(); };
  inside.on("error", close);
  outside.on("error", close);
  inside.pipe(outside);
  outside.pipe(inside);
});
server.on("error", (err) => { console.error(`forwarder: ${err.message}`); process.exit(70); });
server.listen(sock, () => console.log("ready"));
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
