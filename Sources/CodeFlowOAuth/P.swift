import OAuthFlows
