#if OpenAPI
    import AuthenticatedRequests
    import Foundation
    import HTTPTypes

    #if canImport(FoundationNetworking)
        import FoundationNetworking
    #endif

    // Conversions between swift-http-types' messages, which swift-openapi-runtime speaks, and
    // Foundation's, which the authenticator and `HTTPTransport` speak.

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

    extension HTTPURLResponse {
        /// `response` as Foundation's type, so the authenticator can classify it.
        static func converting(_ response: HTTPResponse, url: URL) -> HTTPURLResponse? {
            var fields: [String: String] = [:]
            for field in response.headerFields {
                fields[field.name.rawName] = fields[field.name.rawName].map { "\($0), \(field.value)" } ?? field.value
            }
            return HTTPURLResponse(url: url, statusCode: response.status.code, httpVersion: nil, headerFields: fields)
        }
    }

    extension HTTPResponse {
        /// Foundation's `response` as swift-http-types' type; fields with invalid names are dropped.
        init(_ response: HTTPURLResponse) {
            var fields = HTTPFields()
            for (name, value) in response.allHeaderFields {
                guard let name = name as? String, let value = value as? String, let fieldName = HTTPField.Name(name)
                else { continue }
                fields.append(HTTPField(name: fieldName, value: value))
            }
            self.init(status: HTTPResponse.Status(code: response.statusCode), headerFields: fields)
        }
    }
#endif
