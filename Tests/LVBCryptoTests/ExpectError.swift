import Testing

/// Expects `body` to throw exactly `expected` (typed throws keep the error type).
func expectError<E: Error & Equatable, T>(_ expected: E, _ body: () throws(E) -> T,
                                          sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        _ = try body()
        Issue.record("expected \(expected), got success", sourceLocation: sourceLocation)
    } catch {
        #expect(error == expected, sourceLocation: sourceLocation)
    }
}
