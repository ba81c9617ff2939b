#if OpenAPI
    import AuthenticatedRequests
    import Foundation
    import HTTPTypes

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    // Conversions between swift-http-types' messages, which swift-openapi-runtime speaks, and
    // Foundation's requests and the core's `ResponseHead`, which the authenticator and
    // `HTTPTransport` speak.

    /// A request the OpenAPI runtime handed over that has no valid URL.
    struct InvalidRequestURL: Error, CustomStringConvertible {
        let description: String
    }

    extension URLRequest {
        /// `request` addressed to `baseURL` + its path (which carries the query), with its method
        /// and header fields.
        init(_ request: HTTPRequest, baseURL: URL) throws {
            guard var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false),
                let relative = URLComponents(string: request.path ?? "")
            else {
                throw InvalidRequestURL(description: "The request's path is not a valid URL path.")
            }
            components.percentEncodedPath += relative.percentEncodedPath
            components.percentEncodedQuery = relative.percentEncodedQuery
            guard let url = components.url else {
                throw InvalidRequestURL(description: "The base URL and the request's path make no valid URL.")
            }
            self.init(url: url)
            httpMethod = request.method.rawValue
            for field in request.headerFields {
                addValue(field.value, forHTTPHeaderField: field.name.rawName)
            }
        }
    }

    extension HTTPRequest {
        /// This request with every header field that `authenticated` set or changed compared
        /// with `original` (the credential's `Authorization`, and whatever else the
        /// authenticator applies).
        func applying(headersOf authenticated: URLRequest, comparedWith original: URLRequest) -> HTTPRequest {
            var request = self
            let before = original.allHTTPHeaderFields ?? [:]
            for (name, value) in authenticated.allHTTPHeaderFields ?? [:] where before[name] != value {
                guard let fieldName = HTTPField.Name(name) else { continue }
                request.headerFields[fieldName] = value
            }
            return request
        }
    }

    extension ResponseHead {
        /// `response` as the head the authenticator reads, its fields in order.
        init(_ response: HTTPResponse, url: URL) {
            var fields = HeaderFields()
            for field in response.headerFields {
                fields.append(name: field.name.rawName, value: field.value)
            }
            self.init(statusCode: response.status.code, url: url, headerFields: fields)
        }
    }

    extension HTTPResponse {
        /// A transport's `head` as swift-http-types' type, fields in order; fields with invalid
        /// names are dropped.
        init(_ head: ResponseHead) {
            var fields = HTTPFields()
            for field in head.headerFields {
                guard let name = HTTPField.Name(field.name) else { continue }
                fields.append(HTTPField(name: name, value: field.value))
            }
            self.init(status: HTTPResponse.Status(code: head.statusCode), headerFields: fields)
        }
    }
#endif
