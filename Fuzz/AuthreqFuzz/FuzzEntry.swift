import Foundation
import FuzzDriver

/// Built with `-sanitize=fuzzer` (Scripts/fuzz), this program is a libFuzzer binary whose target
/// is chosen by `AUTHREQ_FUZZ_TARGET`. Built normally, `authreq-fuzz TARGET FILE…` runs saved
/// inputs (a corpus, or a finding) through a target.
@main
struct FuzzMain {
    static func main() {
        if authreq_fuzzer_is_linked() != 0 {
            let name = ProcessInfo.processInfo.environment["AUTHREQ_FUZZ_TARGET"] ?? ""
            guard FuzzTargets.all[name] != nil else { usage() }
            var argc = CommandLine.argc
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
            exit(authreq_fuzzer_run(&argc, &argv, fuzzOneInput))
        }
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTargets.all[name] else { usage() }
        var count = 0
        for path in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            target(data)
            count += 1
        }
        FileHandle.standardError.write(Data("\(name): \(count) inputs ran without a finding\n".utf8))
    }

    static func usage() -> Never {
        FileHandle.standardError.write(
            Data(
                ("usage: AUTHREQ_FUZZ_TARGET=TARGET authreq-fuzz (libFuzzer build), or authreq-fuzz TARGET FILE…; "
                    + "targets: \(FuzzTargets.all.keys.sorted().joined(separator: ", "))\n").utf8))
        exit(2)
    }
}

/// The target named by `AUTHREQ_FUZZ_TARGET`, looked up once.
private let selectedTarget: @Sendable (Data) -> Void =
    FuzzTargets.all[ProcessInfo.processInfo.environment["AUTHREQ_FUZZ_TARGET"] ?? ""] ?? { @Sendable _ in }

private func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let bytes else { return 0 }
    selectedTarget(Data(bytes: bytes, count: count))
    return 0
}

/// libFuzzer's entry when libFuzzer's own `main` runs: in a debug build, SwiftPM renames this
/// program's `main`, so libFuzzer's takes its place (Scripts/fuzz builds in debug, which compiles
/// in half the time of a release build). The target is the one `AUTHREQ_FUZZ_TARGET` names.
@_cdecl("LLVMFuzzerTestOneInput")
public func llvmFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    fuzzOneInput(bytes, count)
}
