#if canImport(Glibc)
import Glibc
#endif

/// Reads console lines from stdin on a background thread (works for a
/// terminal and for a pipe) and hands each to `handle`. Stops at end of input.
final class Console: @unchecked Sendable {
    private let handle: @Sendable (String) -> Void

    init(handle: @escaping @Sendable (String) -> Void) {
        self.handle = handle
    }

    func start() {
        let handle = self.handle
        var thread = pthread_t()
        let box = Unmanaged.passRetained(LineReader(handle: handle))
        pthread_create(&thread, nil, { arg in
            // invariant: the argument is the retained LineReader passed below
            let reader = Unmanaged<LineReader>.fromOpaque(arg!).takeRetainedValue()
            reader.run()
            return nil
        }, box.toOpaque())
        pthread_detach(thread)
    }
}

private final class LineReader {
    let handle: @Sendable (String) -> Void
    init(handle: @escaping @Sendable (String) -> Void) { self.handle = handle }

    func run() {
        while let line = readLine(strippingNewline: true) {
            let trimmed = line.trimmingCharacters()
            if !trimmed.isEmpty { handle(trimmed) }
        }
    }
}

extension String {
    func trimmingCharacters() -> String {
        var s = self[...]
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
