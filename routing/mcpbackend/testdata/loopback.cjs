// Preloaded with `node -r` by the tests: every server socket listens on 127.0.0.1 only,
// whatever host the program asked for, and the bound address is written to stderr as
// "LISTENING <port>" once listening.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args[0] !== null && typeof args[0] === "object" && !args[0].path) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  } else if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    if (typeof args[1] === "string") args[1] = "127.0.0.1";
    else args.splice(1, 0, "127.0.0.1");
  }
  this.once("listening", () => process.stderr.write("LISTENING " + this.address().port + "\n"));
  return listen.apply(this, args);
};
