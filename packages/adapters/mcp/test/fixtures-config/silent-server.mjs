// A process that starts and never answers: it reads stdin and says nothing, so `initialize` hangs.
process.stdin.resume()
setInterval(() => {}, 1 << 30)
