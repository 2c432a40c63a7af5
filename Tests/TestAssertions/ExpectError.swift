import Testing

/// Expects `body` to throw exactly `expected` (typed throws keep the error
/// type), never to succeed or crash. The one such helper of every test target.
public func expectError<E: Error & Equatable, T>(_ expected: E, _ body: () throws(E) -> T,
                                                 sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        _ = try body()
        Issue.record("expected \(expected), got success", sourceLocation: sourceLocation)
    } catch {
        #expect(error == expected, sourceLocation: sourceLocation)
    }
}

/// Expects `body` to throw an error that `matches` accepts (for errors
/// carrying a library's own message), never to succeed or crash.
public func expectError<E: Error, T>(_ what: String, _ matches: (E) -> Bool, _ body: () throws(E) -> T,
                                     sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        _ = try body()
        Issue.record("\(what): expected an error, got success", sourceLocation: sourceLocation)
    } catch {
        #expect(matches(error), "\(what): \(error)", sourceLocation: sourceLocation)
    }
}
