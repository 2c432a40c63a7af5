import CLibFuzzer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fuzz target's `LLVMFuzzerTestOneInput`.
public typealias FuzzTestOneInput = (UnsafePointer<UInt8>, Int) -> CInt

/// The target `runLibFuzzer` drives (a C callback cannot capture it).
private var currentTarget: FuzzTestOneInput?

/// Runs libFuzzer's driver with the process's arguments (`-max_total_time`,
/// corpus directories, …) on `testOneInput`, and exits with its status.
public func runLibFuzzer(_ testOneInput: @escaping FuzzTestOneInput) -> Never {
    currentTarget = testOneInput
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    let status = LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        guard let target = currentTarget else { return 0 }
        guard let data else {
            var empty: UInt8 = 0
            return withUnsafePointer(to: &empty) { target($0, 0) }
        }
        return target(data, size)
    }
    exit(status)
}

/// The fuzz oracle: a broken property is reported to libFuzzer as a crash,
/// which saves the input that caused it.
public func fuzzCheck(_ condition: Bool, _ target: StaticString, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    fputs("\(target): property violated: \(message())\n", stderr)
    abort()
}
