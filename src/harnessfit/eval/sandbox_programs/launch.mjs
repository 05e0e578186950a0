// written by harnessfit eval: the sandbox's side of the model endpoint forward, then the agent
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import { spawn } from "node:child_process";

const [sock, host, port, seed, home, wsSeed, ws, cwd, ...cmd] = process.argv.slice(2);
const buf = Buffer.alloc(64);
let got = "";
while (!got.includes("\n")) {
  let n = 0;
  try { n = fs.readSync(0, buf); } catch (err) { if (err.code === "EAGAIN") continue; throw err; }
  if (n === 0) { console.error("harnessfit sandbox: the runner never said go"); process.exit(70); }
  got += buf.toString("utf8", 0, n);
}
try {
  if (seed !== "-") fs.cpSync(seed, home, { recursive: true });
  if (wsSeed !== "-") fs.cpSync(wsSeed, ws, { recursive: true });
} catch (err) {
  console.error(`harnessfit sandbox: cannot seed HOME or the workspace: ${err.message}`);
  process.exit(71);
}
const server = net.createServer((inside) => {
  const outside = net.connect(sock);
  const close = () => { inside.destroy(); outside.destroy(); };
  inside.on("error", close);
  outside.on("error", close);
  inside.pipe(outside);
  outside.pipe(inside);
});
server.on("error", (err) => {
  console.error(`harnessfit sandbox: cannot listen on ${host}:${port}: ${err.message}`);
  process.exit(70);
});
server.listen(Number(port), host, () => {
  const child = spawn(cmd[0], cmd.slice(1), { stdio: ["ignore", "inherit", "inherit"], cwd });
  child.on("error", (err) => {
    console.error(`harnessfit sandbox: cannot start ${cmd[0]}: ${err.message}`);
    process.exit(127);
  });
  child.on("exit", (code, signal) => process.exit(code ?? 128 + (os.constants.signals[signal] ?? 0)));
  for (const s of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(s, () => child.kill(s));
});
