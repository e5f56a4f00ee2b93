"""LTI 1.3 launches on `grader serve`: the OIDC login, the checked id_token, deep linking's answer.

    GET|POST /lti/login    third-party initiated login: a state and a nonce kept here, then a redirect to the
                           platform's auth_login_url (scope=openid, response_type=id_token, response_mode=form_post,
                           prompt=none, client_id, redirect_uri, login_hint, lti_message_hint, state, nonce)
    POST /lti/launch       the id_token: RS256 against the platform's key by kid; iss, aud/azp, exp/iat, the
                           nonce used once, the state matched, the deployment registered, the message type and
                           version 1.3.0. A learner opens their page of the service, an instructor the
                           instructor's page; a deep-linking request lists the lessons to link.

A login's state is bound to the browser that started it (a cookie set at
login, checked at launch): an id_token and state carried to another browser
sign nobody in there. Who the user is, and whether the launch's LMS course is
this course's, is lti_course's to say.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from grader.base import database
from grader.service.lti import courses as lti_course, keys as lti_keys
from grader.service.lti.keys import LtiRefused, Platform

LTI = lti_course.LTI
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
STATE_S = 600.0
"""How long a login's state waits for its launch."""
LEEWAY_S = 30
"""Clock skew allowed on exp and iat."""


@dataclass(frozen=True)
class Launch:
    """A launch that passed every check."""

    student: str
    """The course's id for the user (see the module's note)."""
    name: str
    role: str
    """`student` or `instructor`."""
    message_type: str
    claims: dict[str, Any]
    platform: Platform
    context: lti_course.Context


class Launches:
    """The logins waiting for their launch (state -> nonce), the nonces used and the deep-linking choices offered,
    kept where every server of the course sees them (`held`: the queue's database): a login answered by one server
    is launched on another, and a nonce used on one is refused by all."""

    def __init__(self, held: database.Held) -> None:
        self.held = held
        self.keys = lti_keys.PlatformKeys()

    def login(self, params: dict[str, str], launch_url: str) -> tuple[str, str, str]:
        """(the platform's auth URL to redirect to, the state, the browser's binding to keep in a cookie), for a
        third-party initiated login."""
        issuer, hint = params.get("iss", ""), params.get("login_hint", "")
        if not issuer or not hint:
            raise LtiRefused("a login needs `iss` and `login_hint` from the platform")
        where = lti_keys.platform(issuer, params.get("client_id") or None)
        state, nonce, binding = (secrets.token_urlsafe(24) for _ in range(3))
        self.held.put("lti-login", state, json.dumps([nonce, where.issuer, where.client_id, binding]), STATE_S)
        query = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post", "prompt": "none",
                 "client_id": where.client_id, "redirect_uri": launch_url, "login_hint": hint, "state": state,
                 "nonce": nonce}
        if params.get("lti_message_hint"):
            query["lti_message_hint"] = params["lti_message_hint"]
        url = where.auth_login_url + ("&" if "?" in where.auth_login_url else "?") + urlencode(query)
        return url, state, binding

    def offer(self, launch: Launch) -> str:
        """A deep-linking request's choice kept for its answer (on whichever server it arrives): its key."""
        link = secrets.token_urlsafe(16)
        self.held.put("lti-link", link, json.dumps([launch.claims, launch.platform.issuer, launch.platform.client_id]),
                      STATE_S)
        return link

    def chosen(self, link: str) -> Launch | None:
        """The deep-linking request a choice answers, once; None for one used or expired."""
        kept = self.held.take("lti-link", link)
        if kept is None:
            return None
        claims, issuer, client_id = json.loads(kept)
        return _launch(claims, lti_keys.platform(issuer, client_id))

    def launch(self, id_token: str, state: str, binding: str) -> Launch:
        """The id_token checked against the login it answers, in the browser that started it (`binding`, from
        its cookie); one line for whatever is wrong."""
        import jwt

        waiting = self.held.take("lti-login", state) if state else None
        if waiting is None:
            raise LtiRefused("the launch answers no login of this tool (an unknown, used or expired state): "
                             "open the assignment from the LMS again")
        nonce, issuer, client_id, expected = json.loads(waiting)
        if not hmac.compare_digest(binding.encode(), expected.encode()):
            raise LtiRefused("the launch arrives in another browser than the one its login started in (no cookie "
                             "of that login): open the assignment from the LMS again, in this browser")
        try:
            header = jwt.get_unverified_header(id_token)
            unverified = jwt.decode(id_token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise LtiRefused("the launch's id_token is not a JWT") from None
        if unverified.get("iss") != issuer:
            raise LtiRefused(f"the launch comes from {str(unverified.get('iss'))[:80]!r}, not the platform the login "
                             f"named ({issuer})")
        where = lti_keys.platform(issuer, client_id)
        if header.get("alg") != "RS256":
            raise LtiRefused(f"the launch is signed with {str(header.get('alg'))[:20]!r}; LTI 1.3 uses RS256")
        claims = self._verified(id_token, where, str(header.get("kid") or ""))
        self._checked(claims, where, nonce)
        return _launch(claims, where)

    def _verified(self, id_token: str, where: Platform, kid: str) -> dict[str, Any]:
        import jwt

        key = self.keys.key(where, kid)
        try:
            claims: dict[str, Any] = jwt.decode(id_token, key, algorithms=["RS256"], audience=where.client_id,
                                                issuer=where.issuer, leeway=LEEWAY_S,
                                                options={"require": ["exp", "iat", "nonce", "sub", "aud", "iss"]})
        except jwt.ExpiredSignatureError:
            raise LtiRefused("the launch has expired (its exp is past): open the assignment from the LMS again") \
                from None
        except jwt.InvalidAudienceError:
            raise LtiRefused(f"the launch is addressed to another tool (its aud is not this tool's client id "
                             f"{where.client_id})") from None
        except jwt.InvalidSignatureError:
            raise LtiRefused("the launch's signature does not hold with the platform's published key") from None
        except jwt.PyJWTError as err:
            raise LtiRefused(f"the launch's id_token was refused ({str(err)[:120]})") from None
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != where.client_id:
            raise LtiRefused("the launch names several audiences and its azp is not this tool")
        return claims

    def _checked(self, claims: dict[str, Any], where: Platform, nonce: str) -> None:
        if not self.held.first("lti-nonce", str(claims["nonce"]), STATE_S + LEEWAY_S):
            raise LtiRefused("the launch was replayed (its nonce was used already): open the assignment from "
                             "the LMS again")
        if claims["nonce"] != nonce:
            raise LtiRefused("the launch's nonce is not the one its login sent")
        deployment = str(claims.get(LTI + "deployment_id") or "")
        if where.deployment_ids and deployment not in where.deployment_ids:
            raise LtiRefused(f"deployment {deployment[:60]!r} of {where.issuer} is not registered in the course's "
                             f"{lti_keys.REGISTRATION}")
        if claims.get(LTI + "version") != "1.3.0":
            raise LtiRefused(f"LTI version {str(claims.get(LTI + 'version'))[:20]!r}: this tool speaks 1.3.0")
        kind = claims.get(LTI + "message_type")
        if kind not in ("LtiResourceLinkRequest", "LtiDeepLinkingRequest"):
            raise LtiRefused(f"message type {str(kind)[:40]!r} is not one this tool answers")


def _launch(claims: dict[str, Any], where: Platform) -> Launch:
    """The launch's user and context, checked against the course (nothing is recorded for one refused)."""
    name = str(claims.get("name") or "")[:200]
    as_role = lti_course.role(claims.get(LTI + "roles"))
    student = lti_course.identify(claims, where.issuer)
    context = lti_course.admit(claims, where, student, as_role)
    lti_course.remember(claims, where.issuer, student, name, as_role, context)
    return Launch(student, name, as_role, str(claims[LTI + "message_type"]), claims, where, context)


def deep_link_response(launch: Launch, lesson_id: str, title: str, points: float, launch_url: str) -> tuple[str, str]:
    """(the platform's deep_link_return_url, the signed LtiDeepLinkingResponse JWT) linking one lesson, with a line
    item of its points."""
    import jwt

    settings = launch.claims.get(DL + "deep_linking_settings") or {}
    back = settings.get("deep_link_return_url")
    if not isinstance(back, str) or not back:
        raise LtiRefused("the deep-linking request names no deep_link_return_url")
    kid, key = lti_keys.signing_key(launch.platform.private_key_file or None)
    now = int(time.time())
    item = {"type": "ltiResourceLink", "title": title, "url": launch_url, "custom": {"lesson": lesson_id},
            "lineItem": {"scoreMaximum": points, "label": title, "resourceId": lesson_id, "tag": "grader"}}
    claims = {"iss": launch.platform.client_id, "aud": launch.platform.issuer, "iat": now, "exp": now + 300,
              "nonce": uuid.uuid4().hex, LTI + "message_type": "LtiDeepLinkingResponse", LTI + "version": "1.3.0",
              LTI + "deployment_id": launch.claims.get(LTI + "deployment_id"), DL + "content_items": [item]}
    if settings.get("data") is not None:
        claims[DL + "data"] = settings["data"]
    return back, jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})
