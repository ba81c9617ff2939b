// A helper process for tests that need a real second process: a write under a file-size limit
// (a full disk), and later several processes sharing one token store.
//
// Usage: authreq-test-helper store-write DIRECTORY KEY BYTES FILE_SIZE_LIMIT
import AuthenticatedRequests
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "store-write":
    let values = Array(arguments.dropFirst())
    guard values.count == 4, let bytes = Int(values[2]), let limit = rlim_t(values[3]) else {
        fail("usage: store-write DIRECTORY KEY BYTES FILE_SIZE_LIMIT")
    }
    // A write past RLIMIT_FSIZE fails with EFBIG, as a full disk fails with ENOSPC; the signal
    // that would kill the process is ignored so that the store sees the error.
    signal(SIGXFSZ, SIG_IGN)
    var limits = rlimit(rlim_cur: limit, rlim_max: limit)
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limits) == 0 else { fail("setrlimit failed") }
    let store = FileTokenStore(directory: URL(fileURLWithPath: values[0]))
    let payload =
        Data(#"{"access_token":""#.utf8) + Data(repeating: UInt8(ascii: "x"), count: bytes)
        + Data(#""}"#.utf8)
    do {
        try await store.save(payload, forKey: values[1])
        print("saved")
    } catch let error as TokenStoreError {
        print("failed: \(error.code)")
    }
default:
    fail("unknown command")
}
