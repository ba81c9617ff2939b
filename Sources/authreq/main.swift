// `authreq`: the command-line tool. Its commands live in the AuthreqCLI target.
import AuthreqCLI

await AuthreqCommand.runAsRoot()
