"""protocol.py: a kernel's protocol message is checked before anything reads it."""

from __future__ import annotations

from grader.kernel import protocol


def _msg(msg_type="stream", content=None, **parts):
    msg = {"header": {"msg_id": "1", "msg_type": msg_type}, "parent_header": {"msg_id": "0"}, "metadata": {},
           "content": {"name": "stdout", "text": "hi"} if content is None else content}
    msg.update(parts)
    return msg


def test_a_sound_message_has_no_problem():
    assert protocol.problem(_msg()) == ""
    assert protocol.problem(_msg("comm_open", {"anything": object()})) == ""  # unread types: envelope only


def test_each_garbled_part_is_named():
    assert protocol.problem("text") == "a message that is a str, not an object"
    assert protocol.problem(_msg(header=[])) == "a message whose header is a list, not an object"
    assert protocol.problem(_msg(header={"msg_id": 1, "msg_type": "stream"})) == \
        "a message whose header field 'msg_id' is a int, not a string"
    assert protocol.problem(_msg(content={"name": "stdout", "text": 5})) == "a 'stream' message whose 'text' is a int"
    assert "traceback holds something other than text" in protocol.problem(
        _msg("error", {"ename": "E", "evalue": "v", "traceback": [1]}))
    assert "data is not text by MIME type" in protocol.problem(
        _msg("display_data", {"data": {"text/plain": 3}, "metadata": {}}))


def test_a_bool_is_not_a_count():
    content = {"data": {}, "metadata": {}, "execution_count": True}
    assert protocol.problem(_msg("execute_result", content)) == \
        "a 'execute_result' message whose 'execution_count' is a bool"
