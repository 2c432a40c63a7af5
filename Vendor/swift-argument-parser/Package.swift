// swift-tools-version:6.0
//===----------------------------------------------------------------------===//
//
// This source file is part of the Swift Argument Parser open source project
//
// Copyright (c) 2020 Apple Inc. and the Swift project authors
// Licensed under Apache License v2.0 with Runtime Library Exception
//
// See https://swift.org/LICENSE.txt for license information
//
//===----------------------------------------------------------------------===//

// The library part of swift-argument-parser 1.8.2, vendored by lvbnode: see
// README.md. Only the ArgumentParser product and its two targets are kept.

import PackageDescription

let package = Package(
  name: "swift-argument-parser",
  products: [
    .library(name: "ArgumentParser", targets: ["ArgumentParser"]),
  ],
  targets: [
    .target(name: "ArgumentParser", dependencies: ["ArgumentParserToolInfo"]),
    .target(name: "ArgumentParserToolInfo"),
  ]
)
